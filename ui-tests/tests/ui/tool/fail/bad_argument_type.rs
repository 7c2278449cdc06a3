struct NotAnArgument;

/// A parameter that is neither an argument nor injectable.
#[presa::tool]
async fn bad_argument_type(x: NotAnArgument) -> String {
    let _ = x;
    String::new()
}

fn main() {}
