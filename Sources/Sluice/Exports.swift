// Sluice's library: `import Sluice` brings the pipeline model, events and metrics of SluiceCore with it, so that a
// program needs one import.
@_exported public import SluiceCore
