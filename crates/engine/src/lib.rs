//! vigil-engine
