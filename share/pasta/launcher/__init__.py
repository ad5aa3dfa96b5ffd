"""The pasta launcher (bin/pasta runs launcher.cli.main): one module per concern.

  where      where pasta's parts are, the variables it names, what the library says
  pipelines  the injection libraries `pasta run` chooses among (share/pasta/pipelines.json)
  run        pasta run: the plan, the program's run (twice for -t stall_blame), run.json
  jobs       pasta report and pasta replay: a job's processes merged, the HTML pages
  cli        the command line
"""
