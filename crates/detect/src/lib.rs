//! vigil-detect
