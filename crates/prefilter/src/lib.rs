//! vigil-prefilter
