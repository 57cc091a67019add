//! `jp-wasm-limits FILE.wasm…`: instrument core wasm modules (in place) so the JS host can stop
//! a call at its deadline, on engines where nothing else can interrupt synchronous wasm
//! (workerd, Deno; a page's main thread).
//!
//! Every loop header gets a fuel check: the module imports a mutable `i64` global
//! `jp:limits.fuel` and a function `jp:limits.check`; each iteration of every loop decrements
//! the fuel, and when it is zero calls `check`, which either refills it or throws (the call has
//! run past its deadline), unwinding the component. Modules without loops are left as they are.
//! The cost is a few instructions per loop iteration.

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

/// Prepend the fuel check to the body of each loop of `f`.
fn instrument(f: &mut LocalFunction, fuel: GlobalId, check: FunctionId) -> usize {
    let loops = loop_bodies(f);
    for &body in &loops {
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
    if module.imports.iter().any(|i| i.module == MODULE) {
        return Ok(format!("{path}: already instrumented"));
    }
    let has_loops = module.funcs.iter_local().any(|(_, f)| !loop_bodies(f).is_empty());
    if !has_loops {
        return Ok(format!("{path}: no loops, left as it is"));
    }
    let (fuel, _) = module.add_import_global(MODULE, "fuel", ValType::I64, true, false);
    let ty = module.types.add(&[], &[]);
    let (check, _) = module.add_import_func(MODULE, "check", ty);
    let mut count = 0;
    for (_, f) in module.funcs.iter_local_mut() {
        count += instrument(f, fuel, check);
    }
    module.emit_wasm_file(path).map_err(|e| format!("{path}: cannot write: {e}"))?;
    Ok(format!("{path}: {count} loops instrumented"))
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
