//! `jp-fs-tools`: the first-party file tools as one VFS tool binary (`runtime = "vfs"`).

fn main() -> std::process::ExitCode {
    jp_tool::serve(jp_fs_tools::TOOLS)
}
