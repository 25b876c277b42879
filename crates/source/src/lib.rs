//! vigil-source
