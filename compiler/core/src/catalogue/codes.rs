//! The diagnostic codes the catalogue phase emits, by meaning (registered in
//! `diagnostics/codes/catalogue.rs`, explained in `docs/diagnostics/L20xx.md`).

/// The YAML itself cannot be parsed.
pub const INVALID_YAML: &str = "L2001";
/// A key that is no field of the schema.
pub const UNKNOWN_FIELD: &str = "L2002";
/// A key written twice in one mapping.
pub const DUPLICATE_KEY: &str = "L2003";
/// A required field is absent.
pub const MISSING_FIELD: &str = "L2004";
/// A value of the wrong YAML type or an unknown keyword.
pub const WRONG_TYPE: &str = "L2005";
/// A unit literal that cannot be read.
pub const BAD_UNIT: &str = "L2006";
/// A unit literal of the wrong dimension.
pub const WRONG_DIMENSION: &str = "L2007";
/// A number outside its allowed range, or a list of the wrong length.
pub const OUT_OF_RANGE: &str = "L2008";
/// A device id that no device file defines.
pub const UNKNOWN_DEVICE: &str = "L2009";
/// A site name that the pool does not define.
pub const UNKNOWN_SITE: &str = "L2010";
/// Two devices, pools, sites, node groups or tenants with one name.
pub const DUPLICATE_NAME: &str = "L2011";
/// A site with no path of links to a site it claims to reach.
pub const UNREACHABLE_SITE: &str = "L2012";
/// A currency with no exchange rate in the pool.
pub const UNKNOWN_CURRENCY: &str = "L2013";
/// Figures that contradict each other (free above total, quotas above the pool …).
pub const INCONSISTENT: &str = "L2014";
/// A device or pool id that differs from its file name.
pub const ID_MISMATCH: &str = "L2015";
/// A file outside `devices/` and `pools/`.
pub const UNKNOWN_FILE: &str = "L2016";
/// A name specs cannot refer to, or a malformed checkpoint root.
pub const INVALID_NAME: &str = "L2017";
/// A node group whose software is older than its device needs.
pub const SOFTWARE_TOO_OLD: &str = "L2018";

/// Every code above, for the registry test.
pub const ALL: &[&str] = &[
    INVALID_YAML,
    UNKNOWN_FIELD,
    DUPLICATE_KEY,
    MISSING_FIELD,
    WRONG_TYPE,
    BAD_UNIT,
    WRONG_DIMENSION,
    OUT_OF_RANGE,
    UNKNOWN_DEVICE,
    UNKNOWN_SITE,
    DUPLICATE_NAME,
    UNREACHABLE_SITE,
    UNKNOWN_CURRENCY,
    INCONSISTENT,
    ID_MISMATCH,
    UNKNOWN_FILE,
    INVALID_NAME,
    SOFTWARE_TOO_OLD,
];
