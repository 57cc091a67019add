//! One bound for "Send where threads exist".
//!
//! Native hosts run backends on a multi-threaded runtime, so their futures must be `Send`. In the
//! browser futures hold `JsValue`s and are never `Send`. Instead of two copies of every trait, core
//! traits use [`MaybeSend`] / [`MaybeSync`] and return [`BoxFuture`]: on wasm32 they ask for nothing.

use std::future::Future;
use std::pin::Pin;

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::*;

    /// `Send` on native targets, nothing on wasm32.
    pub trait MaybeSend: Send {}
    impl<T: Send + ?Sized> MaybeSend for T {}

    /// `Sync` on native targets, nothing on wasm32.
    pub trait MaybeSync: Sync {}
    impl<T: Sync + ?Sized> MaybeSync for T {}

    /// A boxed future that is `Send` on native targets.
    pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

    /// A callback given bytes as they arrive (a streamed body); `Send + Sync` on native targets.
    pub type OnBytes<'a> = &'a (dyn Fn(&[u8]) + Send + Sync + 'a);

    /// A callback given text as it is written (a streamed reply); `Send + Sync` on native targets.
    pub type OnText<'a> = &'a (dyn Fn(&str) + Send + Sync + 'a);
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::*;

    /// `Send` on native targets, nothing on wasm32.
    pub trait MaybeSend {}
    impl<T: ?Sized> MaybeSend for T {}

    /// `Sync` on native targets, nothing on wasm32.
    pub trait MaybeSync {}
    impl<T: ?Sized> MaybeSync for T {}

    /// A boxed future; on wasm32 it need not be `Send`.
    pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

    /// A callback given bytes as they arrive (a streamed body).
    pub type OnBytes<'a> = &'a (dyn Fn(&[u8]) + 'a);

    /// A callback given text as it is written (a streamed reply).
    pub type OnText<'a> = &'a (dyn Fn(&str) + 'a);
}

pub use imp::{BoxFuture, MaybeSend, MaybeSync, OnBytes, OnText};
