//! The update applier: a BSON `{u, arrayFilters?, document?, q?}` parsed and applied (`docgate::fuzzing::update`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = docgate::fuzzing::update(data) {
        panic!("{violation}");
    }
});
