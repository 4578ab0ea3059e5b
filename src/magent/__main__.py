from magent.cli.app import main

main()
