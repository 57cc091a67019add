//! The conformance vectors, natively. `JP_BLESS=1` fills in exact responses for cases that only
//! have a loose expectation (and fails if that expectation does not hold).

#![cfg(not(target_arch = "wasm32"))]

#[test]
fn conformance_vectors() {
    let bless = std::env::var_os("JP_BLESS").is_some();
    let report = futures_executor::block_on(jp_tests::run_all(bless));
    println!("conformance vectors (native):\n{}", report.table());
    for (file, doc) in &report.blessed {
        let path = std::path::PathBuf::from(
            std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into()),
        )
        .join("vectors")
        .join(file);
        let mut text = serde_json::to_string_pretty(doc).unwrap();
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        println!("blessed {}", path.display());
    }
    assert!(report.failures.is_empty(), "{} failing vectors:\n{}", report.failures.len(), report.failures.join("\n"));
    assert_eq!(report.ran, jp_tests::VECTOR_COUNT, "every embedded case ran");
    assert!(report.ran >= 150, "at least 150 vectors, have {}", report.ran);
}
