// Databases and collections with mongosh: createCollection, getCollectionNames,
// db.stats(), collection stats, listDatabases, rename, drop, dropDatabase.
// (The interactive helpers `show dbs` / `show collections` are not valid in
// --file scripts; tests/run_all.sh runs them with --eval.)
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file admin.js
load(require('path').join(__dirname, '_lib.js'));

const d = scriptDb('mongosh_admin');
d.createCollection('created');
d.filled.insertMany([{ a: 1 }, { a: 2 }, { a: 3 }]);
checkEq(d.getCollectionNames().sort(), ['created', 'filled'], 'getCollectionNames');

const stats = d.stats();
checkNum(stats.ok, 1, 'db.stats() ok');
checkEq(stats.db, 'mongosh_admin', 'db.stats().db');
checkNum(stats.collections, 2, 'db.stats().collections');
checkNum(stats.objects, 3, 'db.stats().objects');

const collStats = d.runCommand({ collStats: 'filled' });
checkNum(collStats.ok, 1, 'collStats ok');
checkNum(collStats.count, 3, 'collStats count');

// The shell's own helpers read the sizes the backend measured: an index of its own size,
// totalSize = storage + indexes.
d.filled.createIndex({ a: 1 });
const shellStats = d.filled.stats();
checkNum(shellStats.count, 3, 'collection.stats() count');
check(shellStats.indexSizes._id_ > 0, '_id_ index has a size: ' + JSON.stringify(shellStats.indexSizes));
check(shellStats.indexSizes.a_1 > 0, 'a_1 index has a size: ' + JSON.stringify(shellStats.indexSizes));
checkEq(d.filled.totalIndexSize(), shellStats.totalIndexSize, 'totalIndexSize()');
checkNum(shellStats.totalSize, shellStats.storageSize + shellStats.totalIndexSize, 'totalSize');

const names = db.adminCommand({ listDatabases: 1 }).databases.map((x) => x.name);
check(names.includes('mongosh_admin'), 'listDatabases includes mongosh_admin: ' + names);

d.filled.renameCollection('renamed');
checkEq(d.getCollectionNames().sort(), ['created', 'renamed'], 'after renameCollection');
checkEq(d.renamed.countDocuments({}), 3, 'renamed collection keeps its documents');

checkEq(d.created.drop(), true, 'drop');
checkEq(d.getCollectionNames(), ['renamed'], 'after drop');

checkNum(d.dropDatabase().ok, 1, 'dropDatabase');
const after = db.adminCommand({ listDatabases: 1 }).databases.map((x) => x.name);
check(!after.includes('mongosh_admin'), 'dropped database is gone: ' + after);

print('OK');
