//! `jp-fs-tools`: the builtin file tools as one VFS tool binary (`runtime = "vfs"`).

fn main() -> std::process::ExitCode {
    jp_tool::serve(jp_fs_tools::TOOLS)
}
