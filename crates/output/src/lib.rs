//! vigil-output
