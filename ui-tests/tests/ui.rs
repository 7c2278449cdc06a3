//! Every compile error presa's macros can give, with its `.stderr` (refresh with
//! `TRYBUILD=overwrite cargo test -p presa-ui-tests` and read the diff), and passing cases
//! for every supported signature shape.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/fail/*.rs");
    t.pass("tests/ui/*/pass/*.rs");
}
