#[presa::tool]
struct NotAFunction;

fn main() {}
