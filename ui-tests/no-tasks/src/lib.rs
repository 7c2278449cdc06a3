//! trybuild cases for presa's macros with presa's default features off live under
//! `tests/ui/`.
