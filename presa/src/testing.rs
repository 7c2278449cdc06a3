//! An in-process test client: drives a server through the same pipeline as the
//! transports, with no socket. Filled in below.
