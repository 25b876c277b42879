//! vigil-rules
