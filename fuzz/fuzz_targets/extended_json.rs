//! Extended JSON on the REST side: a request body parsed, written back and parsed again (`docgate::fuzzing::extended_json`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = docgate::fuzzing::extended_json(data) {
        panic!("{violation}");
    }
});
