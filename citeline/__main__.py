from citeline.cli import main

main()
