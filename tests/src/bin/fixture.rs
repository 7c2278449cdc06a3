//! The conformance fixture's command line, for the stdio tests to start as a child.

fn main() -> std::process::ExitCode {
    presa_fixture::cli::main()
}
