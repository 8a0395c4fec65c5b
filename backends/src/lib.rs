//! Renders loam plans into Kubernetes, Slurm and bare-metal manifests (placeholder).
