//! The calculator itself, free of any binding: i64 expressions (`+ - * / %`, parentheses, unary
//! minus, variables), `NAME = EXPR`, `vars`, `clear` (asks first) and `quit`. Every mistake —
//! bad syntax, an unknown name, overflow, division by zero, nesting too deep — is an `Err` with
//! a message for the user, never a panic.

use std::collections::BTreeMap;

/// How deep parentheses and unary minus may nest (a guard for the guest's stack).
const MAX_DEPTH: usize = 64;

/// What one line did.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Output to show (possibly empty: a blank line or a comment).
    Out(String),
    /// `clear` with bindings to forget: the caller asks first, then calls [`Calc::clear`].
    AskClear(usize),
    /// `quit`: the session ends with this result.
    Quit(String),
}

/// The bindings.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Calc {
    pub vars: BTreeMap<String, i64>,
}

impl Calc {
    /// Run one line.
    pub fn line(&mut self, line: &str) -> Result<Step, String> {
        let line = line.trim();
        match line {
            "" => return Ok(Step::Out(String::new())),
            _ if line.starts_with('#') => return Ok(Step::Out(String::new())),
            "vars" if self.vars.is_empty() => return Ok(Step::Out("(no bindings)".into())),
            "vars" => {
                let lines: Vec<String> = self.vars.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                return Ok(Step::Out(lines.join("\n")));
            }
            "clear" if self.vars.is_empty() => return Ok(Step::Out("(no bindings to clear)".into())),
            "clear" => return Ok(Step::AskClear(self.vars.len())),
            "quit" => return Ok(Step::Quit(format!("bye: {}", plural(self.vars.len())))),
            _ => {}
        }
        let tokens = lex(line)?;
        if let [Tok::Name(name), Tok::Eq, rest @ ..] = tokens.as_slice() {
            if matches!(name.as_str(), "vars" | "clear" | "quit") {
                return Err(format!("'{name}' is a command, not a name to bind"));
            }
            let value = self.eval(rest)?;
            self.vars.insert(name.clone(), value);
            return Ok(Step::Out(format!("{name} = {value}")));
        }
        Ok(Step::Out(format!("= {}", self.eval(&tokens)?)))
    }

    /// Forget every binding; how many there were.
    pub fn clear(&mut self) -> usize {
        let n = self.vars.len();
        self.vars.clear();
        n
    }

    fn eval(&self, tokens: &[Tok]) -> Result<i64, String> {
        if tokens.is_empty() {
            return Err("expected an expression".into());
        }
        let mut p = Parser { tokens, at: 0, vars: &self.vars };
        let v = p.sum(0)?;
        match p.tokens.get(p.at) {
            None => Ok(v),
            Some(t) => Err(format!("unexpected {t} after the expression")),
        }
    }
}

/// "1 binding", "3 bindings".
pub fn plural(n: usize) -> String {
    if n == 1 { "1 binding".into() } else { format!("{n} bindings") }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Num(i64),
    Name(String),
    Op(char),
    Open,
    Close,
    Eq,
}

impl std::fmt::Display for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tok::Num(n) => write!(f, "number {n}"),
            Tok::Name(n) => write!(f, "name '{n}'"),
            Tok::Op(c) => write!(f, "'{c}'"),
            Tok::Open => f.write_str("'('"),
            Tok::Close => f.write_str("')'"),
            Tok::Eq => f.write_str("'='"),
        }
    }
}

fn lex(line: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            ' ' | '\t' => {}
            '0'..='9' => {
                let mut end = i + 1;
                while let Some(&(j, d)) = chars.peek() {
                    if !d.is_ascii_digit() {
                        break;
                    }
                    end = j + 1;
                    chars.next();
                }
                let n =
                    line[i..end].parse().map_err(|_| format!("number {} is too large for 64 bits", &line[i..end]))?;
                out.push(Tok::Num(n));
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut end = i + 1;
                while let Some(&(j, d)) = chars.peek() {
                    if !(d.is_ascii_alphanumeric() || d == '_') {
                        break;
                    }
                    end = j + 1;
                    chars.next();
                }
                out.push(Tok::Name(line[i..end].to_owned()));
            }
            '+' | '-' | '*' | '/' | '%' => out.push(Tok::Op(c)),
            '(' => out.push(Tok::Open),
            ')' => out.push(Tok::Close),
            '=' => out.push(Tok::Eq),
            other => return Err(format!("unexpected character '{other}' at column {}", i + 1)),
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Tok],
    at: usize,
    vars: &'a BTreeMap<String, i64>,
}

impl Parser<'_> {
    fn next(&mut self) -> Option<&Tok> {
        let t = self.tokens.get(self.at);
        self.at += 1;
        t
    }

    /// sum := product (('+' | '-') product)*
    fn sum(&mut self, depth: usize) -> Result<i64, String> {
        let mut v = self.product(depth)?;
        while let Some(Tok::Op(op @ ('+' | '-'))) = self.tokens.get(self.at) {
            let op = *op;
            self.at += 1;
            let r = self.product(depth)?;
            v = arith(v, op, r)?;
        }
        Ok(v)
    }

    /// product := unary (('*' | '/' | '%') unary)*
    fn product(&mut self, depth: usize) -> Result<i64, String> {
        let mut v = self.unary(depth)?;
        while let Some(Tok::Op(op @ ('*' | '/' | '%'))) = self.tokens.get(self.at) {
            let op = *op;
            self.at += 1;
            let r = self.unary(depth)?;
            v = arith(v, op, r)?;
        }
        Ok(v)
    }

    /// unary := '-' unary | NUMBER | NAME | '(' sum ')'
    fn unary(&mut self, depth: usize) -> Result<i64, String> {
        if depth > MAX_DEPTH {
            return Err(format!("the expression nests deeper than {MAX_DEPTH} levels"));
        }
        match self.next().cloned() {
            Some(Tok::Op('-')) => {
                let v = self.unary(depth + 1)?;
                v.checked_neg().ok_or_else(|| format!("overflow in -({v})"))
            }
            Some(Tok::Num(n)) => Ok(n),
            Some(Tok::Name(n)) => self.vars.get(&n).copied().ok_or_else(|| format!("unknown variable '{n}'")),
            Some(Tok::Open) => {
                let v = self.sum(depth + 1)?;
                match self.next() {
                    Some(Tok::Close) => Ok(v),
                    Some(t) => Err(format!("expected ')' but found {t}")),
                    None => Err("missing ')'".into()),
                }
            }
            Some(t) => Err(format!("unexpected {t}")),
            None => Err("the expression ends too early".into()),
        }
    }
}

fn arith(a: i64, op: char, b: i64) -> Result<i64, String> {
    if matches!(op, '/' | '%') && b == 0 {
        return Err(format!("division by zero in {a} {op} {b}"));
    }
    let v = match op {
        '+' => a.checked_add(b),
        '-' => a.checked_sub(b),
        '*' => a.checked_mul(b),
        '/' => a.checked_div(b),
        _ => a.checked_rem(b),
    };
    v.ok_or_else(|| format!("overflow in {a} {op} {b}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(c: &mut Calc, line: &str) -> String {
        match c.line(line) {
            Ok(Step::Out(s)) => s,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn arithmetic_and_bindings() {
        let mut c = Calc::default();
        assert_eq!(out(&mut c, "1 + 2 * 3"), "= 7");
        assert_eq!(out(&mut c, "(1 + 2) * 3"), "= 9");
        assert_eq!(out(&mut c, "-7 / 2"), "= -3");
        assert_eq!(out(&mut c, "-7 % 3"), "= -1");
        assert_eq!(out(&mut c, "--4"), "= 4");
        assert_eq!(out(&mut c, "x = 2 * 3"), "x = 6");
        assert_eq!(out(&mut c, "x + 1"), "= 7");
        assert_eq!(out(&mut c, "y_2 = x * -x"), "y_2 = -36");
        assert_eq!(out(&mut c, "vars"), "x = 6\ny_2 = -36");
        assert_eq!(out(&mut c, "# a comment"), "");
    }

    #[test]
    fn mistakes_are_errors_not_panics() {
        let mut c = Calc::default();
        for (line, needle) in [
            ("1 / 0", "division by zero"),
            ("1 % 0", "division by zero"),
            ("9223372036854775807 + 1", "overflow"),
            ("-9223372036854775807 - 2", "overflow"),
            ("(0 - 9223372036854775807 - 1) / -1", "overflow"),
            ("99999999999999999999", "too large"),
            ("y + 1", "unknown variable 'y'"),
            ("(1 + 2", "missing ')'"),
            ("1 + ", "ends too early"),
            ("1 2", "unexpected number 2"),
            ("2 $ 3", "unexpected character '$'"),
            ("quit = 1", "is a command"),
            ("x =", "expected an expression"),
        ] {
            let e = c.line(line).unwrap_err();
            assert!(e.contains(needle), "{line}: {e}");
        }
        let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(c.line(&deep).unwrap_err().contains("nests deeper"));
        assert!(c.line(&"-".repeat(10_000)).unwrap_err().contains("nests deeper"));
    }

    #[test]
    fn clear_asks_and_quit_counts() {
        let mut c = Calc::default();
        assert_eq!(out(&mut c, "clear"), "(no bindings to clear)");
        out(&mut c, "a = 1");
        out(&mut c, "b = 2");
        assert_eq!(c.line("clear"), Ok(Step::AskClear(2)));
        assert_eq!(c.line("quit"), Ok(Step::Quit("bye: 2 bindings".into())));
        assert_eq!(c.clear(), 2);
        assert_eq!(out(&mut c, "vars"), "(no bindings)");
    }
}
