//! The WIT packages in `wit/` parse, resolve, and have the shape the host and guests rely on.

#![cfg(not(target_arch = "wasm32"))]

use wit_parser::{Resolve, WorldItem, WorldKey};

fn wit_dir(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into()))
        .join("../wit")
        .join(name)
}

fn world_exports(resolve: &Resolve, world: &str) -> Vec<String> {
    let (_, w) = resolve.worlds.iter().find(|(_, w)| w.name == world).unwrap_or_else(|| panic!("world {world}"));
    w.exports
        .iter()
        .map(|(key, item)| match (key, item) {
            (WorldKey::Name(n), _) => n.clone(),
            (WorldKey::Interface(id), _) => resolve.interfaces[*id].name.clone().unwrap_or_default(),
        })
        .collect()
}

#[test]
fn tool_package_is_the_seeds_world_plus_optional_describe() {
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve.push_dir(wit_dir("tool")).expect("wit/tool parses");
    assert_eq!(resolve.packages[pkg].name.to_string(), "jp:tool@0.1.0");

    // The seed's world: exactly one export, `run(ctx, name, arguments, answers) -> outcome`.
    assert_eq!(world_exports(&resolve, "tool"), ["run"]);
    let (_, tool) = resolve.worlds.iter().find(|(_, w)| w.name == "tool").unwrap();
    let run = tool
        .exports
        .values()
        .find_map(|i| match i {
            WorldItem::Function(f) => Some(f),
            _ => None,
        })
        .unwrap();
    let params: Vec<&str> = run.params.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(params, ["ctx", "name", "arguments", "answers"]);
    assert!(run.result.is_some());

    // The types interface mirrors jp_tool.
    let (_, types) = resolve.interfaces.iter().find(|(_, i)| i.name.as_deref() == Some("types")).unwrap();
    for ty in ["action", "context", "error-info", "question", "outcome"] {
        assert!(types.types.contains_key(ty), "types.{ty}");
    }

    // D06 self-description is an extra world; `tool` itself is unchanged.
    let mut exports = world_exports(&resolve, "described-tool");
    exports.sort();
    assert_eq!(exports, ["describe", "run"]);
}

#[test]
fn host_package_mirrors_the_vfs_methods() {
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve.push_dir(wit_dir("host")).expect("wit/host parses");
    assert_eq!(resolve.packages[pkg].name.to_string(), "jp:host@0.1.0");
    let funcs = |iface: &str| -> Vec<String> {
        let (_, i) = resolve.interfaces.iter().find(|(_, i)| i.name.as_deref() == Some(iface)).unwrap();
        i.functions.keys().cloned().collect()
    };
    let mut fs = funcs("filesystem");
    fs.sort();
    assert_eq!(fs, ["delete", "exists", "grep", "list-dir", "metadata", "read", "rename", "write"]);
    assert_eq!(funcs("http"), ["get", "post"]);
    assert_eq!(funcs("process"), ["run"]);
    // One host function per D11 request method.
    assert_eq!(fs.len() + 2 + 1, jp_core::protocol::METHODS.len());
}
