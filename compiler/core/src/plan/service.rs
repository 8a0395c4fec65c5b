//! Planning a model service: device type × tensor/pipeline/expert degree × batch ×
//! (dis)aggregation under the latency targets, the Pareto front, and the chosen deployment.

use super::ir::ServicePlan;
use crate::catalogue::Catalogue;
use crate::check::Service;

/// Plans `service` (from spec file `file`) on `catalogue`.
pub fn plan_service(service: &Service, file: &str, catalogue: &Catalogue) -> ServicePlan {
    let _ = (service, file, catalogue);
    todo!()
}
