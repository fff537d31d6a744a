//! A command's interrupt reaches the statement it runs: the statement's text is reported to
//! it, and cancelling it (`killOp`) stops the statement with SQLite's interrupt handle.

use super::*;
use crate::interrupt::{Interrupt, Interruption};
use crate::store::StoreError;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_command_interrupts_its_statement() {
    let dir = tempdir();
    let store = open_in(&dir);
    let mut session = session(&store).await;
    let interrupt = Interrupt::default();
    let killer = {
        let interrupt = interrupt.clone();
        tokio::spawn(async move {
            while interrupt.statement().is_none() {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            interrupt.cancel(Interruption::Killed);
        })
    };
    let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) \
                   SELECT count(*) FROM c";
    let result = crate::compute::scope(
        interrupt.clone(),
        session.run(move |conn| {
            conn.query_row(endless, [], |row| row.get::<_, i64>(0))
                .map_err(super::super::conn::db_err)
        }),
    )
    .await;
    ok(killer.await);
    assert!(
        matches!(result, Err(StoreError::Interrupted(Interruption::Killed))),
        "{result:?}"
    );
    assert!(interrupt
        .statement()
        .is_some_and(|sql| sql.contains("WITH RECURSIVE")));
    // The connection serves the next statement.
    let one = session
        .run(|conn| {
            conn.query_row("SELECT 1", [], |row| row.get::<_, i64>(0))
                .map_err(super::super::conn::db_err)
        })
        .await;
    assert_eq!(one.ok(), Some(1));
}
