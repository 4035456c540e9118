"""The base of the named pipelines: a pass that runs a flow's passes as one xDSL `PassPipeline`."""

from abc import abstractmethod

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType

from cimxdsl.transforms.common.errors import PassError


class PipelinePass(ModulePass):
    """A pass that runs a flow's passes (`steps`) in order as one xDSL `PassPipeline`; a step's
    error names the pipeline and the step."""

    @abstractmethod
    def steps(self) -> list[ModulePass]:
        """The flow's passes in order."""

    def pipeline(self, callback: PassPipelineCallbackType | None = None) -> PassPipeline:
        """The steps as a `PassPipeline` calling `callback` between them (xDSL's convention)."""
        return PassPipeline(tuple(self.steps()), callback)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            self.pipeline().apply(ctx, op)
        except PassError as e:  # a step's error, or the pipeline's own option error as it is
            raise (e if e.name == self.name else e.within(self.name)) from None
