/// A `const` function.
#[presa::tool]
const fn constant() -> u32 {
    1
}

/// An `extern` function.
#[presa::tool]
extern "C" fn foreign() -> u32 {
    1
}

fn main() {}
