//! The memory of the shapes the walk visits, worked out in step with it: one block's stash per
//! token once per tensor degree, the model states once per placement, the rest once per shape.
//! The search's ranking and the checker's fit both read memory through it, so they give every
//! layout the same verdict.

use crate::workload::{
    Layout, LayoutMemory, ModelDims, ParamCount, PlacementMemory, StageStates, Stash, TrainSetup,
    layer_bytes_per_token, param_count,
};

/// The memory state of a walk: what the tensor degree and the placement entered last decide.
pub(crate) struct ShapeMemory<'a> {
    model: &'a ModelDims,
    setup: &'a TrainSetup,
    count: ParamCount,
    /// Bytes per token of one block's stash under the current tensor degree, by how the GEMM
    /// inputs are kept.
    per_token: Stash,
    /// The placement entered last while its memory is not worked out yet: a walk that skips
    /// every shape of a placement ([`crate::plan::search::Scores::ByTimeAndDevices`]) never
    /// needs it.
    entered: Option<Layout>,
    /// The memory the current placement alone decides: its model states under every ZeRO
    /// stage.
    placement: Option<PlacementMemory>,
}

impl<'a> ShapeMemory<'a> {
    /// The memory of `model`'s layouts trained as `setup` says.
    pub(crate) fn new(model: &'a ModelDims, setup: &'a TrainSetup) -> ShapeMemory<'a> {
        ShapeMemory {
            model,
            setup,
            count: param_count(model),
            per_token: [0.0; 2],
            entered: None,
            placement: None,
        }
    }

    /// The model's parameter count.
    pub(crate) fn count(&self) -> &ParamCount {
        &self.count
    }

    /// A new tensor degree: `tensor` has it and its sequence parallelism.
    #[inline]
    pub(crate) fn enter_tensor(&mut self, tensor: &Layout) {
        self.per_token = layer_bytes_per_token(self.model, self.setup.precision, tensor);
    }

    /// A new placement: `placement` has every field but the micro-batch, ZeRO and recomputation.
    #[inline]
    pub(crate) fn enter_placement(&mut self, placement: &Layout) {
        self.entered = Some(*placement);
        self.placement = None;
    }

    /// The memory of the current placement, worked out on the first shape that asks; `None`
    /// before the first placement.
    #[inline]
    fn placement(&mut self) -> Option<&PlacementMemory> {
        if let Some(placement) = self.entered.take() {
            // The same for every micro-batch, ZeRO stage and recomputation.
            let states = StageStates::new(self.model, &self.count, self.setup, &placement);
            self.placement = Some(PlacementMemory::new(states, self.model, &placement));
        }
        self.placement.as_ref()
    }

    /// A lower bound on any rank's memory under each ZeRO stage for the current placement (its
    /// model states); `None` before the first placement.
    #[inline]
    pub(crate) fn floors(&mut self) -> Option<[f64; 4]> {
        self.placement().map(PlacementMemory::floors)
    }

    /// The memory of `shape` (a layout of the current placement and tensor degree) under every
    /// ZeRO stage and recomputation mode.
    #[inline]
    pub(crate) fn of_shape(&mut self, shape: &Layout) -> LayoutMemory {
        let (model, setup, per_token) = (self.model, self.setup, self.per_token);
        match self.placement() {
            Some(placement) => {
                LayoutMemory::of_placement(placement, model, setup, shape, per_token)
            }
            None => {
                let states = StageStates::new(model, &self.count, setup, shape);
                LayoutMemory::new(states, model, setup, shape, per_token)
            }
        }
    }
}

/// The floor of `floors` under ZeRO stage `zero`.
#[inline]
pub(crate) fn floor_of(floors: Option<[f64; 4]>, zero: u8) -> Option<f64> {
    floors.and_then(|f| f.get(usize::from(zero.min(3))).copied())
}
