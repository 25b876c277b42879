//! vigil-craft
