//! The same conformance vectors on wasm32-unknown-unknown (run with wasm-bindgen-test under Node):
//! the core gives the same answers in the browser and at the edge as natively.

#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::{console_log, wasm_bindgen_test};

#[wasm_bindgen_test]
async fn conformance_vectors_on_wasm32() {
    let report = jp_tests::run_all(false).await;
    console_log!("conformance vectors (wasm32):\n{}", report.table());
    assert!(report.failures.is_empty(), "{} failing vectors:\n{}", report.failures.len(), report.failures.join("\n"));
    assert_eq!(report.ran, jp_tests::VECTOR_COUNT, "every embedded case ran");
    assert!(report.ran >= 150, "at least 150 vectors, have {}", report.ran);
}
