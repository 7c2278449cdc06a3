/// A C-variadic function.
#[presa::tool]
unsafe extern "C" fn variadic(count: u32, _: ...) -> u32 {
    count
}

fn main() {}
