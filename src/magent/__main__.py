from magent.cli.app import entry

entry()
