// Inserting and reading back over TLS. tests/run_all.sh runs this against a server started
// with --tls-mode required and the certificates of fixtures/tls (not with the plain scripts
// of the folder above):
//   mongosh --tls --tlsCAFile fixtures/tls/ca.pem \
//     "mongodb://localhost:PORT/test?directConnection=true" --quiet --file crud_over_tls.js
load(require('path').join(__dirname, '..', '_lib.js'));

const items = scriptDb('tls_mongosh').items;
const inserted = items.insertOne({ _id: 1, over: 'tls', n: 42 });
check(inserted.acknowledged, 'insert acknowledged');
checkEq(items.findOne({ _id: 1 }), { _id: 1, over: 'tls', n: 42 }, 'document read back');
checkNum(items.countDocuments({}), 1, 'one document');

print('OK');
