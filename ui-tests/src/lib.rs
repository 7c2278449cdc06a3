//! trybuild cases for presa's macros live under `tests/ui/`; the macros issue fills them in.
