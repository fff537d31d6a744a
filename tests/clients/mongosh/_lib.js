// Assertion helpers shared by the mongosh scripts in this folder (loaded with
// load(); tests/run_all.sh skips files whose name starts with "_").
// A failed check throws, which makes mongosh exit non-zero.

function fail(message) {
  throw new Error('assertion failed: ' + message);
}

function check(condition, message) {
  if (!condition) fail(message);
}

function show(value) {
  return EJSON.stringify(value, { relaxed: false });
}

function checkEq(actual, expected, message) {
  const a = show(actual);
  const e = show(expected);
  if (a !== e) fail(message + ': expected ' + e + ', got ' + a);
}

// Numbers whose BSON width the server may choose (Int32, Int64 or Double).
function checkNum(actual, expected, message) {
  const n = actual !== null && typeof actual === 'object' && typeof actual.toNumber === 'function'
    ? actual.toNumber()
    : actual;
  if (typeof n !== 'number' || n !== expected) {
    fail(message + ': expected the number ' + expected + ', got ' + show(actual));
  }
}

function checkThrows(fn, message) {
  let threw = null;
  try {
    fn();
  } catch (err) {
    threw = err;
  }
  if (threw === null) fail(message + ': expected an error, none was raised');
  return threw;
}

// A database of this script's own (each script runs against a fresh server).
function scriptDb(name) {
  return db.getSiblingDB(name);
}

// Cursor ids are 64-bit: a Long, or a plain number if the driver promoted it.
function isZeroId(id) {
  if (typeof id === 'number' || typeof id === 'bigint') return id == 0;
  return id.isZero();
}

function asLong(id) {
  return typeof id === 'number' ? Long.fromNumber(id) : id;
}
