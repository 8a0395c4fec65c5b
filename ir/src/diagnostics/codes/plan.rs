//! Diagnostic codes of the plan phase (L3xxx): what the planner finds about a job that the
//! checks cannot know — whether any layout fits, whether the limits are met, whether the devices
//! are free and guaranteed, whether the prediction is above anything published, whether the
//! search stopped at its cap.

super::codes! {
    NO_LAYOUT = "L3001" => "no layout fits",
    NO_NODE_GROUP = "L3002" => "no node group can run the job",
    DEADLINE_MISSED = "L3003" => "deadline missed",
    OVER_BUDGET = "L3004" => "over budget",
    QUEUES = "L3005" => "devices not free now",
    ABOVE_GUARANTEED_QUOTA = "L3006" => "devices above the guaranteed quota",
    EXTRAPOLATION = "L3007" => "prediction above the best published run",
    NO_DEPLOYMENT = "L3008" => "no deployment meets the service's targets",
    FAILURES_DOMINATE = "L3009" => "failures dominate the run",
    SEARCH_CAPPED = "L3010" => "search stopped at its cap",
}
