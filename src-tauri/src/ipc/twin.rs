//! Wire twins: each DTO the window sees is declared here, in `ipc/`, beside the app core's
//! own type it mirrors, and converts from it field by field.
//!
//! Owns: [`ToWire`] (a core value → its wire twin; lists and options of them too) and
//! [`FromWire`] (the way back, for what commands take), and the macros that declare a twin
//! and its conversion from one field list: [`wire_struct!`], [`wire_enum!`] (unit
//! variants) and [`wire_tagged!`] (variants with fields).
//! Easy to break: nothing, by design: a twin destructures the core type without `..`, so a
//! field added to either side does not compile until the twin has it too.

/// A core value's wire twin.
pub trait ToWire {
    type Wire;
    fn to_wire(self) -> Self::Wire;
}

/// A wire value's core type (what a command takes back from the window).
pub trait FromWire<W> {
    fn from_wire(wire: W) -> Self;
}

macro_rules! same_on_the_wire {
    ($($t:ty),* $(,)?) => {
        $(impl ToWire for $t {
            type Wire = $t;
            fn to_wire(self) -> $t {
                self
            }
        }
        impl FromWire<$t> for $t {
            fn from_wire(wire: $t) -> $t {
                wire
            }
        })*
    };
}

same_on_the_wire!(bool, u8, u16, u32, u64, i32, i64, usize, f32, f64, String);
// The planner's JSON shapes: the window's wasm planner reads them as they are.
same_on_the_wire!(k3_plan_wasm::dto::FootprintJson, k3_plan_wasm::dto::MachineJson, k3_plan_wasm::dto::RatesJson);

impl<T: ToWire> ToWire for Vec<T> {
    type Wire = Vec<T::Wire>;
    fn to_wire(self) -> Self::Wire {
        self.into_iter().map(ToWire::to_wire).collect()
    }
}

impl<T: ToWire> ToWire for Option<T> {
    type Wire = Option<T::Wire>;
    fn to_wire(self) -> Self::Wire {
        self.map(ToWire::to_wire)
    }
}

impl<W, T: FromWire<W>> FromWire<Vec<W>> for Vec<T> {
    fn from_wire(wire: Vec<W>) -> Self {
        wire.into_iter().map(T::from_wire).collect()
    }
}

impl<W, T: FromWire<W>> FromWire<Option<W>> for Option<T> {
    fn from_wire(wire: Option<W>) -> Self {
        wire.map(T::from_wire)
    }
}

/// Declares a camelCase wire struct (serde + ts-rs) twinned with a core struct of the same
/// fields, and `ToWire` / `From` from the core one (and `FromWire` back with `both ways`).
macro_rules! wire_struct {
    (@declare $(#[$meta:meta])* $name:ident $core:path { $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
        #[serde(rename_all = "camelCase")]
        $(#[$meta])*
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $crate::ipc::twin::ToWire for $core {
            type Wire = $name;
            fn to_wire(self) -> $name {
                let $core { $($field),* } = self;
                $name { $($field: $crate::ipc::twin::ToWire::to_wire($field)),* }
            }
        }

        impl From<$core> for $name {
            fn from(core: $core) -> $name {
                $crate::ipc::twin::ToWire::to_wire(core)
            }
        }
    };
    ($(#[$meta:meta])* pub struct $name:ident from $core:path { $($body:tt)* }) => {
        wire_struct!(@declare $(#[$meta])* $name $core { $($body)* });
    };
    ($(#[$meta:meta])* pub struct $name:ident both ways $core:path { $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        wire_struct!(@declare $(#[$meta])* $name $core { $($(#[$fmeta])* $field: $ty),* });

        impl $crate::ipc::twin::FromWire<$name> for $core {
            fn from_wire(wire: $name) -> $core {
                let $name { $($field),* } = wire;
                $core { $($field: $crate::ipc::twin::FromWire::from_wire($field)),* }
            }
        }
    };
}

/// Declares a wire enum of unit variants (serde + ts-rs, the given rename rule) twinned with
/// a core enum of the same variants, converting both ways.
macro_rules! wire_enum {
    ($(#[$meta:meta])* pub enum $name:ident from $core:path { $($(#[$vmeta:meta])* $variant:ident),* $(,)? }) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
        $(#[$meta])*
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $crate::ipc::twin::ToWire for $core {
            type Wire = $name;
            fn to_wire(self) -> $name {
                use $core as Core;
                match self {
                    $(Core::$variant => $name::$variant,)*
                }
            }
        }

        impl From<$core> for $name {
            fn from(core: $core) -> $name {
                $crate::ipc::twin::ToWire::to_wire(core)
            }
        }

        impl $crate::ipc::twin::FromWire<$name> for $core {
            fn from_wire(wire: $name) -> $core {
                use $core as Core;
                match wire {
                    $($name::$variant => Core::$variant,)*
                }
            }
        }
    };
}

/// Declares a wire enum whose variants may carry named fields (serde's tag given in the
/// attributes, ts-rs), twinned with a core enum of the same variants and fields, converting
/// field by field (and back with `both ways`).
macro_rules! wire_tagged {
    (@declare $(#[$meta:meta])* $name:ident $core:path {
        $($(#[$vmeta:meta])* $variant:ident $({ $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)? })?),* $(,)?
    }) => {
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
        $(#[$meta])*
        pub enum $name {
            $($(#[$vmeta])* $variant $({ $($(#[$fmeta])* $field: $ty),* })?,)*
        }

        impl $crate::ipc::twin::ToWire for $core {
            type Wire = $name;
            fn to_wire(self) -> $name {
                use $core as Core;
                match self {
                    $(Core::$variant $({ $($field),* })? => {
                        $name::$variant $({ $($field: $crate::ipc::twin::ToWire::to_wire($field)),* })?
                    })*
                }
            }
        }

        impl From<$core> for $name {
            fn from(core: $core) -> $name {
                $crate::ipc::twin::ToWire::to_wire(core)
            }
        }
    };
    ($(#[$meta:meta])* pub enum $name:ident from $core:path { $($body:tt)* }) => {
        wire_tagged!(@declare $(#[$meta])* $name $core { $($body)* });
    };
    ($(#[$meta:meta])* pub enum $name:ident both ways $core:path {
        $($(#[$vmeta:meta])* $variant:ident $({ $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)? })?),* $(,)?
    }) => {
        wire_tagged!(@declare $(#[$meta])* $name $core {
            $($(#[$vmeta])* $variant $({ $($(#[$fmeta])* $field: $ty),* })?),*
        });

        impl $crate::ipc::twin::FromWire<$name> for $core {
            fn from_wire(wire: $name) -> $core {
                use $core as Core;
                match wire {
                    $($name::$variant $({ $($field),* })? => {
                        Core::$variant $({ $($field: $crate::ipc::twin::FromWire::from_wire($field)),* })?
                    })*
                }
            }
        }
    };
}

pub(crate) use {wire_enum, wire_struct, wire_tagged};
