//! The compile errors of presa's macros users are most likely to meet, each with its
//! `.stderr` (refresh with `TRYBUILD=overwrite cargo test -p presa-ui-tests` and read the
//! diff; the README lists the errors without a case), and passing cases for every
//! supported signature shape.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/fail/*.rs");
    t.pass("tests/ui/*/pass/*.rs");
}
