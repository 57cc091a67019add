//! The seccomp program: a binary search over syscall numbers, in one BPF program.
//!
//! Why not a list of rules tested one after another (what seccompiler builds): when a filter is
//! attached, the kernel runs it once for every syscall number of every architecture to find the
//! syscalls it always allows (the seccomp action cache, Linux 5.11+), so the cost of attaching
//! grows with the path to "allow". With ~50 rules in a row that was ~0.2 ms per program, three
//! programs per child, paid in every sandboxed spawn (measured in `tests/benches/vfs.rs`). A search
//! tree decides any number in a dozen instructions, and one program is attached once.

use libc::sock_filter;

use super::SandboxError;

/// A test on the low 32 bits of a syscall argument (what an `int` or `pid_t` argument carries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arg {
    /// The argument at this index equals the value.
    Eq(u8, u32),
    /// The argument at this index differs from the value.
    Ne(u8, u32),
    /// The argument at this index has any of these bits set.
    AnyBit(u8, u32),
    /// The argument at this index has none of these bits set.
    NoBit(u8, u32),
    /// The argument at this index, masked with the first value, differs from the second (a
    /// field of an argument: `socketpair`'s type without its flags, `mknod`'s file type).
    MaskedNe(u8, u32, u32),
    /// The argument at this index, masked with the first value, equals the second.
    MaskedEq(u8, u32, u32),
}

/// A syscall the filter refuses with `errno`: always (no rules), or when any rule holds (a rule
/// holds when all of its tests do). Two refusals of one syscall with the same errno are merged
/// (either's rules refuse it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    pub nr: u32,
    pub rules: Vec<Vec<Arg>>,
    pub errno: u32,
}

impl Refusal {
    /// Refused whatever the arguments.
    pub(super) fn always(nr: i64, errno: i32) -> Self {
        Self { nr: nr as u32, rules: Vec::new(), errno: errno as u32 }
    }
    /// Refused when one of `rules` holds.
    pub(super) fn when(nr: i64, errno: i32, rules: Vec<Vec<Arg>>) -> Self {
        Self { nr: nr as u32, rules, errno: errno as u32 }
    }
}

// Offsets in `struct seccomp_data` (little-endian: an argument's low half comes first).
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARGS: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 243 | 0x8000_0000 | 0x4000_0000;

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;

fn stmt(code: u32, k: u32) -> sock_filter {
    sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

fn jump(op: u32, k: u32, jt: usize, jf: usize) -> Result<sock_filter, SandboxError> {
    let offset = |d: usize| u8::try_from(d).map_err(|_| SandboxError("seccomp program: jump too long".into()));
    Ok(sock_filter { code: (libc::BPF_JMP | op | libc::BPF_K) as u16, jt: offset(jt)?, jf: offset(jf)?, k })
}

fn ret(k: u32) -> sock_filter {
    stmt(libc::BPF_RET | libc::BPF_K, k)
}

fn errno(e: u32) -> sock_filter {
    ret(libc::SECCOMP_RET_ERRNO | (e & libc::SECCOMP_RET_DATA))
}

fn load(offset: u32) -> sock_filter {
    stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, offset)
}

/// The program for `refusals`: another architecture kills the process (a 32-bit syscall through
/// `int 0x80` on x86_64 would match other numbers); on x86_64, x32 numbers (bit 30,
/// `__X32_SYSCALL_BIT`) are refused with EPERM so they cannot slip past the x86_64 rules — EPERM,
/// not ENOSYS, so a test tells the filter from a kernel without x32 — and numbers at or above 2^31
/// (`syscall(-1)`), which run nothing, are left to the kernel's own ENOSYS; every other syscall is
/// allowed unless a refusal holds.
pub(super) fn program(mut refusals: Vec<Refusal>) -> Result<Vec<sock_filter>, SandboxError> {
    refusals.sort_by_key(|r| r.nr);
    let mut merged: Vec<Refusal> = Vec::with_capacity(refusals.len());
    for r in refusals {
        match merged.last_mut() {
            Some(last) if last.nr == r.nr => {
                if last.errno != r.errno {
                    return Err(SandboxError("seccomp program: a syscall is refused with two errnos".into()));
                }
                // No rules means always: then it stays always.
                if last.rules.is_empty() || r.rules.is_empty() {
                    last.rules.clear();
                } else {
                    last.rules.extend(r.rules);
                }
            }
            _ => merged.push(r),
        }
    }
    let refusals = merged;
    let mut out =
        vec![load(ARCH), jump(libc::BPF_JEQ, AUDIT_ARCH, 1, 0)?, ret(libc::SECCOMP_RET_KILL_PROCESS), load(NR)];
    #[cfg(target_arch = "x86_64")]
    out.extend([
        jump(libc::BPF_JGE, 0x8000_0000, 0, 1)?,
        ret(ALLOW),
        jump(libc::BPF_JGE, 0x4000_0000, 0, 1)?,
        errno(libc::EPERM as u32),
    ]);
    out.extend(tree(&refusals)?);
    if out.len() > libc::BPF_MAXINSNS as usize {
        return Err(SandboxError("seccomp program: too long".into()));
    }
    Ok(out)
}

/// Up to this many numbers are compared one by one; above it the range is split in two.
const LEAF: usize = 3;

/// Decides the syscall number in the accumulator; every path ends in a `ret`.
fn tree(refusals: &[Refusal]) -> Result<Vec<sock_filter>, SandboxError> {
    let mut out = Vec::new();
    if refusals.len() <= LEAF {
        for r in refusals {
            let body = verdict(r)?;
            out.push(jump(libc::BPF_JEQ, r.nr, 0, body.len())?);
            out.extend(body);
        }
        out.push(ret(ALLOW));
        return Ok(out);
    }
    let (low, high) = refusals.split_at(refusals.len() / 2);
    let low = tree(low)?;
    // nr >= the first high number: the next instruction jumps over the low half.
    out.push(jump(libc::BPF_JGE, high[0].nr, 0, 1)?);
    out.push(stmt(libc::BPF_JMP | libc::BPF_JA, low.len() as u32));
    out.extend(low);
    out.extend(tree(high)?);
    Ok(out)
}

/// For a matched syscall number: refuse if a rule holds, else allow.
fn verdict(r: &Refusal) -> Result<Vec<sock_filter>, SandboxError> {
    if r.rules.is_empty() {
        return Ok(vec![errno(r.errno)]);
    }
    let mut out = Vec::new();
    for rule in &r.rules {
        // Each test is a load, for a masked one an `and`, and a jump; a test that fails jumps
        // past the rule's `ret`.
        let size = |t: &Arg| if matches!(t, Arg::MaskedEq(..) | Arg::MaskedNe(..)) { 3 } else { 2 };
        let mut left: usize = rule.iter().map(size).sum::<usize>() + 1;
        for test in rule {
            left -= size(test);
            let (index, mask, insn) = match *test {
                Arg::Eq(i, v) => (i, None, jump(libc::BPF_JEQ, v, 0, left)?),
                Arg::Ne(i, v) => (i, None, jump(libc::BPF_JEQ, v, left, 0)?),
                Arg::AnyBit(i, v) => (i, None, jump(libc::BPF_JSET, v, 0, left)?),
                Arg::NoBit(i, v) => (i, None, jump(libc::BPF_JSET, v, left, 0)?),
                Arg::MaskedEq(i, m, v) => (i, Some(m), jump(libc::BPF_JEQ, v, 0, left)?),
                Arg::MaskedNe(i, m, v) => (i, Some(m), jump(libc::BPF_JEQ, v, left, 0)?),
            };
            if index > 5 {
                return Err(SandboxError("seccomp program: no such argument".into()));
            }
            out.push(load(ARGS + 8 * u32::from(index)));
            if let Some(m) = mask {
                out.push(stmt(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K, m));
            }
            out.push(insn);
        }
        out.push(errno(r.errno));
    }
    out.push(ret(ALLOW));
    Ok(out)
}

/// Runs `program` on one syscall as the kernel would (the subset of classic BPF the programs
/// above use), returning the action and how many instructions it took.
#[cfg(test)]
pub(super) fn run(program: &[sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> (u32, usize) {
    let word = |offset: u32| -> u32 {
        match offset {
            NR => nr,
            ARCH => arch,
            o if o >= ARGS && (o - ARGS).is_multiple_of(4) && o < ARGS + 48 => {
                let a = args[((o - ARGS) / 8) as usize];
                if (o - ARGS).is_multiple_of(8) { a as u32 } else { (a >> 32) as u32 }
            }
            o => panic!("load of offset {o}"),
        }
    };
    let (mut pc, mut acc, mut steps) = (0usize, 0u32, 0usize);
    loop {
        let i = program[pc];
        steps += 1;
        let code = u32::from(i.code);
        pc += 1;
        match code {
            c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => acc = word(i.k),
            c if c == libc::BPF_RET | libc::BPF_K => return (i.k, steps),
            c if c == libc::BPF_JMP | libc::BPF_JA => pc += i.k as usize,
            c if c == libc::BPF_ALU | libc::BPF_AND | libc::BPF_K => acc &= i.k,
            c => {
                let taken = match c & !(libc::BPF_JMP | libc::BPF_K) {
                    libc::BPF_JEQ => acc == i.k,
                    libc::BPF_JGE => acc >= i.k,
                    libc::BPF_JGT => acc > i.k,
                    libc::BPF_JSET => acc & i.k != 0,
                    other => panic!("unexpected instruction {other:#x}"),
                };
                pc += usize::from(if taken { i.jt } else { i.jf });
            }
        }
    }
}

#[cfg(test)]
pub(super) const TEST_ARCH: u32 = AUDIT_ARCH;
