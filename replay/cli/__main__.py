from replay.cli.main import main

main()
