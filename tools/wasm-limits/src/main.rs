//! `jp-wasm-limits FILE.wasm…`: instrument core wasm modules (in place) so the JS host can stop
//! a call at its deadline, on engines where nothing else can interrupt synchronous wasm
//! (workerd, Deno; a page's main thread).
//!
//! Every loop header and every function's entry gets a fuel check (a loop, and recursion, are
//! the two ways wasm runs on): the module imports a mutable `i64` global `jp:limits.fuel` and a
//! function `jp:limits.check`; each iteration of every loop and each call decrements the fuel,
//! and when it is zero calls `check`, which either refills it or throws (the call has run past
//! its deadline), unwinding the component. A module that imports `jp:limits` itself is refused:
//! it could hold the fuel up for every module of the component. Modules without functions are
//! left as they are. The cost is a few instructions per loop iteration and per call.

use std::process::ExitCode;

use walrus::ir::{BinaryOp, Binop, Const, GlobalGet, GlobalSet, IfElse, Instr, InstrSeqId, UnaryOp, Unop, Value};
use walrus::{FunctionId, GlobalId, LocalFunction, Module, ValType};

/// The import module of the fuel global and the check function.
const MODULE: &str = "jp:limits";

/// Every `loop` body in `f`, found by walking its blocks from the entry.
fn loop_bodies(f: &LocalFunction) -> Vec<InstrSeqId> {
    let mut loops = Vec::new();
    let mut todo = vec![f.entry_block()];
    while let Some(seq) = todo.pop() {
        for (instr, _) in &f.block(seq).instrs {
            match instr {
                Instr::Block(b) => todo.push(b.seq),
                Instr::Loop(l) => {
                    loops.push(l.seq);
                    todo.push(l.seq);
                }
                Instr::IfElse(i) => {
                    todo.push(i.consequent);
                    todo.push(i.alternative);
                }
                Instr::TryTable(t) => todo.push(t.seq),
                _ => {}
            }
        }
    }
    loops
}

/// Prepend the fuel check to the body of each loop of `f`, and to its entry; the loops counted.
fn instrument(f: &mut LocalFunction, fuel: GlobalId, check: FunctionId) -> usize {
    let loops = loop_bodies(f);
    for &body in loops.iter().chain(std::iter::once(&f.entry_block())) {
        let builder = f.builder_mut();
        let mut refill = builder.dangling_instr_seq(None);
        refill.call(check);
        let consequent = refill.id();
        let alternative = builder.dangling_instr_seq(None).id();
        let head = [
            Instr::GlobalGet(GlobalGet { global: fuel }),
            Instr::Unop(Unop { op: UnaryOp::I64Eqz }),
            Instr::IfElse(IfElse { consequent, alternative }),
            Instr::GlobalGet(GlobalGet { global: fuel }),
            Instr::Const(Const { value: Value::I64(1) }),
            Instr::Binop(Binop { op: BinaryOp::I64Sub }),
            Instr::GlobalSet(GlobalSet { global: fuel }),
        ];
        let seq = f.block_mut(body);
        let at = seq.instrs.first().map(|(_, loc)| *loc).unwrap_or(seq.end);
        seq.instrs.splice(0..0, head.into_iter().map(|i| (i, at)));
    }
    loops.len()
}

fn run(path: &str) -> Result<String, String> {
    let mut module = Module::from_file(path).map_err(|e| format!("{path}: not a core wasm module: {e}"))?;
    let done = instrument_module(&mut module, path)?;
    if done.ends_with("instrumented") {
        module.emit_wasm_file(path).map_err(|e| format!("{path}: cannot write: {e}"))?;
    }
    Ok(done)
}

/// Instrument `module` (named `path` in messages): what was done, or why it is refused.
fn instrument_module(module: &mut Module, path: &str) -> Result<String, String> {
    if module.imports.iter().any(|i| i.module == MODULE) {
        return Err(format!(
            "{path}: imports {MODULE} itself, which only this instrumentation may (it could keep every module of its component from being stopped); rebuild the component without it"
        ));
    }
    if module.funcs.iter_local().next().is_none() {
        return Ok(format!("{path}: no functions, left as it is"));
    }
    let (fuel, _) = module.add_import_global(MODULE, "fuel", ValType::I64, true, false);
    let ty = module.types.add(&[], &[]);
    let (check, _) = module.add_import_func(MODULE, "check", ty);
    let mut count = 0;
    for (_, f) in module.funcs.iter_local_mut() {
        count += instrument(f, fuel, check);
    }
    Ok(format!("{path}: {count} loops and every function instrumented"))
}

fn main() -> ExitCode {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: jp-wasm-limits FILE.wasm…  (instruments each core module in place)");
        return ExitCode::from(2);
    }
    for f in &files {
        match run(f) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("jp-wasm-limits: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use walrus::{FunctionBuilder, ModuleConfig};

    use super::*;

    /// A module whose one function calls itself forever, with no loop.
    fn recursive() -> (Module, FunctionId) {
        let mut module = Module::with_config(ModuleConfig::new());
        let builder = FunctionBuilder::new(&mut module.types, &[], &[]);
        let f = builder.finish(vec![], &mut module.funcs);
        if let walrus::FunctionKind::Local(local) = &mut module.funcs.get_mut(f).kind {
            local.builder_mut().func_body().call(f);
        }
        module.exports.add("f", f);
        (module, f)
    }

    #[test]
    fn recursion_without_a_loop_is_checked_at_every_call() {
        let (mut module, f) = recursive();
        let done = instrument_module(&mut module, "m").unwrap();
        assert!(done.ends_with("instrumented"), "{done}");
        let walrus::FunctionKind::Local(local) = &module.funcs.get(f).kind else { panic!("local") };
        let entry = local.block(local.entry_block());
        assert!(
            matches!(entry.instrs.first(), Some((Instr::GlobalGet(_), _))),
            "the entry starts with the fuel check: {:?}",
            entry.instrs
        );
        assert!(module.imports.iter().any(|i| i.module == MODULE && i.name == "check"));
    }

    #[test]
    fn a_module_importing_the_limits_itself_is_refused() {
        let (mut module, _) = recursive();
        module.add_import_global(MODULE, "fuel", ValType::I64, true, false);
        let e = instrument_module(&mut module, "m").unwrap_err();
        assert!(e.contains("imports jp:limits itself"), "{e}");
    }
}
