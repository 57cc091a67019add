//! Dropping every capability in the child, for good, whoever runs jp.

use std::io;

/// The highest capability number this code knows of is 40 (`CAP_CHECKPOINT_RESTORE`); the loop
/// goes past it until the kernel says there is no such capability.
const CAP_PROBE_LIMIT: libc::c_ulong = 64;
// securebits: root's exec grants no capabilities, no setuid fix-up, no ambient raise — each locked.
const SECURE_BITS: libc::c_ulong = 0b1111_1111 & !(1 << 4); // all but SECBIT_KEEP_CAPS itself

/// Every capability gone, for good: the bounding set emptied (so `execve` of anything, as root
/// too, grants none), the securebits locked so root gets nothing back, the ambient set cleared,
/// and the effective, permitted and inheritable sets emptied. Without `CAP_SETPCAP` (an
/// unprivileged jp, no user namespace) there is nothing to drop beyond the last two, and
/// `no_new_privs` keeps file capabilities from adding any. Only system calls, no allocation.
pub(super) fn drop_capabilities() -> Result<(), i32> {
    let last = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM);
    #[allow(unsafe_code)]
    // SAFETY: prctl and capset on integers and a C struct on this stack frame.
    unsafe {
        let mut header = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
        let mut data = [CapData::default(); 2];
        if libc::syscall(libc::SYS_capget, &mut header as *mut CapHeader, data.as_mut_ptr()) != 0 {
            return Err(last());
        }
        let setpcap = data[0].effective & (1 << CAP_SETPCAP) != 0;
        if setpcap {
            for cap in 0..CAP_PROBE_LIMIT {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                    if last() == libc::EINVAL {
                        break;
                    }
                    return Err(last());
                }
            }
            if libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0) != 0 {
                return Err(last());
            }
        }
        // Fails with EINVAL only on kernels before 4.3, which have no ambient set.
        if libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && last() != libc::EINVAL {
            return Err(last());
        }
        let none = [CapData::default(); 2];
        if libc::syscall(libc::SYS_capset, &mut header as *mut CapHeader, none.as_ptr()) != 0 {
            return Err(last());
        }
    }
    Ok(())
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
const CAP_SETPCAP: u32 = 8;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct` (two of them for 64 capabilities).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}
