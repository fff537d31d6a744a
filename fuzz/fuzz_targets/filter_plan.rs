//! The filter parser and planner: a BSON `{filter, sort?, indexes?, documents?}` planned, its SQL prepared and run on SQLite and checked against the Rust evaluator, its PostgreSQL placeholders checked (`docgate::fuzzing::filter_plan`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = docgate::fuzzing::filter_plan(data) {
        panic!("{violation}");
    }
});
