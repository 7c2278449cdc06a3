#![deny(warnings)]
// Generated code names only `::presa::…` and `::core::…`: a local `presa` or `core` that
// means something else changes nothing.
use std as presa;

#[allow(dead_code)]
mod core {}

/// Still works.
#[::presa::tool]
async fn still_works(x: String) -> String {
    let _ = presa::mem::size_of::<u8>();
    x
}

fn main() {
    let _ = ::presa::server!().add::<still_works>();
}
