from rigcheck.cli.app import main

main()
