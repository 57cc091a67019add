//! The task store on its own: bounds, TTL, retention and owners, with calls that only wait
//! for their cancellation (the whole path, with real tools, is in `native/tests/tasks.rs`).

use super::*;

/// A call that runs until it is cancelled; its token.
fn running() -> (Running, CancellationToken, ask::Questions) {
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let work = tokio::spawn(async move {
        token.cancelled().await;
        Ok(CallReply::Outcome(ExecutionOutcome::Cancelled { id: "t".into() }))
    });
    let (questions, asked) = ask::channel();
    (Running { work, questions: asked }, cancel, questions)
}

/// Poll `id` until it has ended (at most 10 s).
async fn ended(store: &TaskStore, owner: Owner, id: &str) -> DetailedTask {
    for _ in 0..1000 {
        let t = store.get(owner, id).unwrap();
        if t.status().is_terminal() {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} did not end");
}

#[tokio::test]
async fn a_task_running_past_its_ttl_is_stopped_and_fails() {
    let store = TaskStore::with_times(Duration::from_millis(50), KEEP_ENDED);
    let owner = Owner::new();
    let (run, cancel, _q) = running();
    let task = store.create(owner, "t".into(), run, cancel.clone(), None).unwrap();
    assert_eq!(task.ttl_ms, Some(50));
    let t = ended(&store, owner, &task.task_id).await;
    assert!(cancel.is_cancelled(), "the call was cancelled");
    let TaskPayload::Failed { error } = &t.payload else { panic!("{t:?}") };
    assert!(error["message"].as_str().unwrap().contains("ttlMs"), "{error:?}");
}

#[tokio::test]
async fn an_ended_task_is_forgotten_once_kept_long_enough_and_its_ttl_says_so() {
    let store = TaskStore::with_times(TTL, Duration::from_secs(2));
    let owner = Owner::new();
    let (run, cancel, _q) = running();
    let task = store.create(owner, "t".into(), run, cancel.clone(), None).unwrap();
    store.cancel(owner, &task.task_id).unwrap();
    let t = ended(&store, owner, &task.task_id).await;
    assert_eq!(t.status(), TaskStatus::Cancelled);
    // An ended task's TTL is no longer the running one's: it becomes its age plus the 2 s it
    // is kept (at least those 2 s, whatever the machine's speed).
    let ttl = t.task.ttl_ms.unwrap();
    assert_ne!(ttl, TTL.as_millis() as u64, "{t:?}");
    assert!(ttl >= 2_000, "{t:?}");
    for _ in 0..400 {
        if store.get(owner, &task.task_id).is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("an ended task was kept past its time");
}

#[tokio::test]
async fn another_owner_can_neither_see_nor_answer_nor_cancel_a_task() {
    let store = TaskStore::new();
    let (mine, theirs) = (Owner::new(), Owner::new());
    let (run, cancel, questions) = running();
    let task = store.create(mine, "t".into(), run, cancel.clone(), None).unwrap();
    // The call asks; only its owner sees the question.
    let asking = tokio::spawn(async move {
        let schema = rmcp::model::ElicitationSchema::builder().required_string("answer").build().unwrap();
        let request = rmcp::model::ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "?".into(),
            requested_schema: schema,
        };
        ask::ask(&questions, request).await
    });
    for _ in 0..200 {
        if store.get(mine, &task.task_id).unwrap().status() == TaskStatus::InputRequired {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let id = task.task_id.as_str();
    let answer =
        InputResponses::from([("q1".to_owned(), serde_json::json!({"action": "accept", "content": {"answer": "x"}}))]);
    for e in [
        store.get(theirs, id).map(|_| ()).unwrap_err(),
        store.update(theirs, id, answer.clone()).unwrap_err(),
        store.cancel(theirs, id).unwrap_err(),
    ] {
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }
    assert!(!cancel.is_cancelled());
    assert_eq!(store.get(mine, id).unwrap().status(), TaskStatus::InputRequired);
    // Its owner answers.
    store.update(mine, id, answer).unwrap();
    let answered = asking.await.unwrap().expect("answered");
    assert_eq!(answered.content.unwrap()["answer"], "x");
    store.close(None).await;
    assert!(cancel.is_cancelled());
}

#[tokio::test]
async fn an_owner_full_of_running_tasks_gets_no_more_until_one_ends() {
    let store = TaskStore::new();
    let (owner, other) = (Owner::new(), Owner::new());
    let mut ids = Vec::new();
    for _ in 0..MAX_TASKS {
        assert!(store.has_room(owner));
        let (run, cancel, _q) = running();
        ids.push(store.create(owner, "t".into(), run, cancel, None).unwrap().task_id);
    }
    assert!(!store.has_room(owner), "{MAX_TASKS} running tasks fill an owner");
    assert!(store.has_room(other), "and only that owner");
    store.cancel(owner, &ids[0]).unwrap();
    ended(&store, owner, &ids[0]).await;
    assert!(store.has_room(owner), "an ended task makes room");
    let (run, cancel, _q) = running();
    store.create(owner, "t".into(), run, cancel, None).unwrap();
    assert!(store.get(owner, &ids[0]).is_err(), "the oldest ended task was dropped for the new one");
    // Closing one owner cancels its tasks only.
    let (run, cancel_other, _q) = running();
    let kept = store.create(other, "t".into(), run, cancel_other.clone(), None).unwrap();
    store.close(Some(owner)).await;
    assert!(store.get(owner, &ids[1]).is_err());
    assert!(!cancel_other.is_cancelled());
    assert_eq!(store.get(other, &kept.task_id).unwrap().status(), TaskStatus::Working);
    store.close(None).await;
}
