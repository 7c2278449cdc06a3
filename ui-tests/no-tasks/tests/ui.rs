//! The macros' errors that depend on presa's features, with presa's default features off
//! (refresh with `TRYBUILD=overwrite cargo test -p presa-ui-tests-no-tasks` and read the
//! diff).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
