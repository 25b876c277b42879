//! vigil-flow
