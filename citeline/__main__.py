from citeline.cli.main import main

main()
