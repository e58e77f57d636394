"""The chapters' inline ``{eval}`` role, read from the book's cached execution.

A chapter shows a computed value in its prose as ``{eval}`name```, where ``name`` is both a
variable of the chapter's kernel and a glued value of the same name (``booktools.glued``):

* JupyterLab with jupyterlab-myst 2.7 evaluates ``name`` in the kernel (an ``execute_request``
  with ``user_expressions``) when the markdown cell is run, and shows the result's text or
  markdown; it has no ``{glue}`` role, so ``{glue:text}`` stays raw text there.
* MyST-NB 1.4 evaluates ``{eval}`` only when it executes the page itself
  (``nb_execution_mode: inline``): in every other mode its notebook client's ``eval_variable``
  raises ``NotImplementedError`` (``myst_nb/core/execute/base.py``) and the role warns "This
  document does not have a running kernel" (``myst_nb/ext/eval/__init__.py``).  The book
  executes each chapter once into jupyter-cache and renders from it (``cache`` mode), so this
  role, registered after MyST-NB's, reads the glued value of the same name from the cached
  outputs instead, and renders it as MyST-NB's ``{glue}`` role would (text without quotes,
  markdown as MyST).  A name that was not glued is a warning, hence a failure under ``-W``.
"""

from __future__ import annotations

from docutils import nodes
from myst_nb.core.variables import RetrievalError, render_variable_outputs
from myst_nb.ext.eval import eval_warning
from myst_nb.ext.glue.utils import retrieve_glue_data
from myst_nb.ext.utils import RoleBase


class GluedEvalRole(RoleBase):
    """``{eval}`name``` rendered from the glued value ``name`` of the page's executed notebook."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        try:
            data = retrieve_glue_data(self.document, self.text)
        except RetrievalError as exc:
            msg = f"{exc} ({{eval}}`{self.text}` shows the value glued under that name)"
            return [], [eval_warning(msg, self.document, self.line)]
        data.metadata["strip_text_quotes"] = True
        return render_variable_outputs([data], self.document, self.line, self.source,
                                       inline=True), []


def setup(app):
    app.setup_extension("myst_nb")       # MyST-NB's own eval role first, then this one over it
    app.add_role("eval", GluedEvalRole(), override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
