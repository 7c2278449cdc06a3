//! The fixture's tool surface against its committed snapshot, `presa-fixture/surface.json`:
//! a change that breaks the conformance runner's view of the fixture (a tool gone, an
//! argument renamed, a narrower schema) fails here until the snapshot is rewritten on
//! purpose with `PRESA_SURFACE=update`, and the rewrite shows in review.

#[tokio::test]
async fn the_fixture_keeps_its_surface() {
    let server = presa_fixture::build().expect("the fixture builds");
    presa::testing::assert_surface(&server, "surface.json").await;
}
