//! OP_MSG / OP_QUERY → command parsing: a wire frame through CommandRequest and the command's argument parsing (`docgate::fuzzing::command`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = docgate::fuzzing::command(data) {
        panic!("{violation}");
    }
});
