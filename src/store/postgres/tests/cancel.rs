//! A command's interrupt reaches the statement it runs: the statement's text is reported to
//! it, and cancelling it (`killOp`) sends PostgreSQL a cancel request for it.

use crate::interrupt::{Interrupt, Interruption};
use crate::store::StoreError;

#[tokio::test]
async fn killing_the_command_cancels_its_statement() {
    let db = fresh_db!();
    let store = super::open(&db).await;
    let mut session = super::session(&store).await;
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
    let started = std::time::Instant::now();
    let result = crate::compute::scope(interrupt.clone(), async {
        session
            .conn()?
            .query("SELECT pg_sleep(60)", &Vec::new())
            .await
    })
    .await;
    super::ok(killer.await);
    assert!(
        matches!(result, Err(StoreError::Interrupted(Interruption::Killed))),
        "{result:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(interrupt
        .statement()
        .is_some_and(|sql| sql.contains("pg_sleep")));
    // The connection serves the next statement.
    let one = session.conn().map(|_| ());
    assert!(one.is_ok());
    db.drop_db().await;
}
