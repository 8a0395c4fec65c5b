//! The diagnostic codes the catalogue phase emits, by meaning (registered in
//! `diagnostics/codes/catalogue.rs`, explained in `docs/diagnostics/L2xxx.md`): L20xx for
//! loading the catalogue, L21xx for checking jobs against it.

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

/// A pool the catalogue does not define.
pub const JOB_UNKNOWN_POOL: &str = "L2101";
/// A site (data site or allowed site) the pool does not have.
pub const JOB_UNKNOWN_SITE: &str = "L2102";
/// A device id the catalogue does not define.
pub const JOB_UNKNOWN_DEVICE: &str = "L2103";
/// A known device the pool (or the allowed sites) has none of.
pub const DEVICE_NOT_IN_POOL: &str = "L2104";
/// A precision none of the allowed devices trains in.
pub const UNSUPPORTED_PRECISION: &str = "L2105";
/// A feature name no device can have.
pub const JOB_UNKNOWN_FEATURE: &str = "L2106";
/// A feature none of the allowed devices has.
pub const UNSUPPORTED_FEATURE: &str = "L2107";
/// A model too large for the allowed devices under any layout the spec allows.
pub const MODEL_DOES_NOT_FIT: &str = "L2108";
/// Pinned tensor parallelism above the devices in one node.
pub const TENSOR_ABOVE_NODE: &str = "L2109";
/// A pinned layout needing more devices than the pool holds.
pub const TOO_MANY_DEVICES: &str = "L2110";
/// A job needing more devices than the tenant's quota.
pub const ABOVE_QUOTA: &str = "L2111";
/// A software requirement no allowed node group meets, or one that cannot be read.
pub const SOFTWARE_UNMET: &str = "L2112";
/// A tenant the pool does not have.
pub const JOB_UNKNOWN_TENANT: &str = "L2113";
/// A budget currency the pool cannot convert.
pub const JOB_UNKNOWN_CURRENCY: &str = "L2114";
/// A checkpoint path outside the tenant's checkpoint root.
pub const CHECKPOINT_OUTSIDE_ROOT: &str = "L2115";

/// Every code of the checks of jobs against the catalogue.
pub const JOB_ALL: &[&str] = &[
    JOB_UNKNOWN_POOL,
    JOB_UNKNOWN_SITE,
    JOB_UNKNOWN_DEVICE,
    DEVICE_NOT_IN_POOL,
    UNSUPPORTED_PRECISION,
    JOB_UNKNOWN_FEATURE,
    UNSUPPORTED_FEATURE,
    MODEL_DOES_NOT_FIT,
    TENSOR_ABOVE_NODE,
    TOO_MANY_DEVICES,
    ABOVE_QUOTA,
    SOFTWARE_UNMET,
    JOB_UNKNOWN_TENANT,
    JOB_UNKNOWN_CURRENCY,
    CHECKPOINT_OUTSIDE_ROOT,
];
